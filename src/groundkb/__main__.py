from groundkb.serve.cli import main

main()
