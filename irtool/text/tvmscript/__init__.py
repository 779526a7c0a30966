"""TVMScript: parse (`parser.parse_tvmscript`) and print (`printer.print_tvmscript`)
modules of Relax functions and TIR PrimFuncs as TVM 0.27 writes them."""
