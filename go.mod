module github.com/berthhq/berth

go 1.26.0
