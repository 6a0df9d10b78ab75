from minigpt.cli.main import main

main()
