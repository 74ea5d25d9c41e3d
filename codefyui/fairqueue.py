"""A queue taken round-robin across owners, so an owner's second item waits behind every
other owner's first: the run queue (apps/runs/service.py) and the turns on the request
thread (codefyui/handler.py). No Django here."""
from __future__ import annotations

from collections import OrderedDict, deque
from typing import Any, Hashable


class FairQueue:
    def __init__(self) -> None:
        self._owners: OrderedDict[Hashable, deque] = OrderedDict()  # whose turn is next comes first

    def push(self, owner: Hashable, item: Any) -> None:
        self._owners.setdefault(owner, deque()).append(item)

    def push_front(self, owner: Hashable, item: Any) -> None:
        """Put back an item that was taken and could not be served: it is next again."""
        self._owners.setdefault(owner, deque()).appendleft(item)
        self._owners.move_to_end(owner, last=False)

    def pop(self) -> Any:
        """The next owner's oldest item; that owner's turn then goes to the back."""
        owner, items = next(iter(self._owners.items()))
        item = items.popleft()
        if items:
            self._owners.move_to_end(owner)
        else:
            del self._owners[owner]
        return item

    def remove(self, item: Any) -> bool:
        for owner, items in self._owners.items():
            if item in items:
                items.remove(item)
                if not items:
                    del self._owners[owner]
                return True
        return False

    def count(self, owner: Hashable) -> int:
        return len(self._owners.get(owner, ()))

    def order(self) -> list[Any]:
        """Every queued item in the order they will be taken."""
        queues = list(self._owners.values())
        depth = max((len(q) for q in queues), default=0)
        return [q[i] for i in range(depth) for q in queues if i < len(q)]

    def place(self, item: Any) -> int | None:
        """1 for the item taken next, 2 for the one after, ...; None when not queued."""
        order = self.order()
        return order.index(item) + 1 if item in order else None

    def __len__(self) -> int:
        return sum(len(q) for q in self._owners.values())

    def __bool__(self) -> bool:   # without counting every owner's items (the request thread asks per request)
        return bool(self._owners)
