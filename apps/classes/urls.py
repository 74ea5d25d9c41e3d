"""The class pages, under /classes/."""
from django.urls import path

app_name = "classes"

urlpatterns: list = []
