assert %arg0, "assertion failed" : tile<i1>
