"""The companion-computer side: planners, the runtime that drives them, stage timing and compute emulation.

Start with `onboard.runtime` (the loop and its interface), `onboard.planner` (what a planner is) and
`onboard.planners` (the reference planners).
"""
