from django.apps import AppConfig


class InspectorConfig(AppConfig):
    name = "apps.inspector"
    label = "inspector"
