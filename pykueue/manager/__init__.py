"""The async queue manager: pure core, job integrations, and the runtime that talks to the API."""
