"""Remote consoles: authorised tokens and the serial console's websocket proxy
(Nova's ``console`` package and ``nova-serialproxy``)."""
