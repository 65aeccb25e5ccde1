module github.com/sluice-go/sluice/adapters/echo/sluiceechov5

go 1.26.0

require (
	github.com/labstack/echo/v5 v5.4.4
	github.com/sluice-go/sluice v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.12.1
)

require (
	go.uber.org/goleak v1.3.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/time v0.16.0 // indirect
)

replace github.com/sluice-go/sluice => ../../..
