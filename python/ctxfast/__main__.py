from ctxfast.cli import main

main()
