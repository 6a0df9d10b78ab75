from minigpt.cli import main

main()
