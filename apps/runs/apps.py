from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "apps.runs"
    label = "runs"

    def ready(self):
        from . import push, service, store
        store.store_class()  # a misspelt CODEFYUI_RUN_OUTPUT_STORE_CLASS stops the start, not a request
        service.add_listener(push.publish)
