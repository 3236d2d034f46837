import TetherCLI
import TetherIntegrations

TetherCommand.main(integrations: TetherIntegrations.builtIn)
