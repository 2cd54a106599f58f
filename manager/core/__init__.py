"""The pure scheduling core: no I/O, no asyncio; events in, decisions out."""
