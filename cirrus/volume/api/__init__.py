"""Block storage v3 HTTP API (the Cinder subset clients and Nova call)."""
