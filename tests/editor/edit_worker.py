"""One server process of the two-process test: ``setup`` makes a student and a tab;
``edit TAB START COUNT`` waits for the start time, then posts COUNT Add node forms, all made
from revision 0, and prints the nodes whose adding was acknowledged (302 selecting it)."""
import json
import sys
import time

import django

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

from apps.editor.models import Tab  # noqa: E402


def main(mode: str, *args: str) -> None:
    if mode == "setup":
        student = get_user_model().objects.create_user("ada", password="pw-ada-123")
        print(Tab.objects.create(owner=student, title="shared").pk)
        return
    tab_id, start, count = int(args[0]), float(args[1]), int(args[2])
    setup_test_environment()
    client = Client()
    client.force_login(get_user_model().objects.get(username="ada"))
    acknowledged = []
    time.sleep(max(0.0, start - time.time()))
    for _ in range(count):
        response = client.post(f"/editor/{tab_id}/nodes/add", {"type": "Softmax", "_revision": "0"})
        if response.status_code == 302 and "node=" in response.url:
            acknowledged.append(response.url.split("node=")[1].split("&")[0])
    print(json.dumps(acknowledged))


if __name__ == "__main__":
    main(*sys.argv[1:])
