import TetherCLI

TetherCommand.main()
