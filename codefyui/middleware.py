"""Run the middleware stack in one thread under ASGI.

With only async-capable middleware in front of sync views, Django runs each middleware's
hooks through its own sync/async hop: about 30 hops a request, the largest cost of a small
Inspector fragment under Daphne. A sync-only middleware innermost makes Django enter the sync
world once, at the top of the stack, instead. Every view here is sync, and WebSockets do not
pass through this stack, so nothing is lost."""
from __future__ import annotations


class OneThreadStack:
    sync_capable = True
    async_capable = False

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)
