"""The onboard agent: the planner loop on a companion computer, driven by a harness on another machine.

The board runs `hil agent` (`onboard.agent.server`); a campaign trial that names the agent's address
(`onboards: [HOST:PORT]`) sends it the trial's planner and task (`hil.agent_client`), flies the vehicle
to the start itself, hands the navigation phase to the board, judges it from its own telemetry, and
merges what the board measured into the trial record on the harness's clock (`onboard.agent.clock`).
The wire format is `onboard.agent.protocol`.
"""
