module snowflaked/client

go 1.19
