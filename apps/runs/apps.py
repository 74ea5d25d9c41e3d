from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "apps.runs"
    label = "runs"

    def ready(self):
        from . import push, service
        service.add_listener(push.publish)
