from minigpt.cli.commands import main

main()
