from django.apps import AppConfig


class StatsConfig(AppConfig):
    name = "apps.stats"
    label = "stats"
