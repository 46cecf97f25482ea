module example.org/ztensor/ffi-test

go 1.19
