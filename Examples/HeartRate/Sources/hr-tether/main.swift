import HeartRateIntegration
import TetherCLI
import TetherIntegrations

// Tether's command line with one more core: everything `tether` does, and `replay` also knows
// `heart_rate` sets. No line of Tether changed to add it.
TetherCommand.main(integrations: TetherIntegrations.builtIn.adding(HeartRateIntegration()))
