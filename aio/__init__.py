"""asyncio helpers every layer may use (bottom layer): stopping a helper task without losing a cancellation."""
