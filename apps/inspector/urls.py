from django.urls import path

from . import views

urlpatterns = [
    path("<int:tab_id>/inspect/<str:node_id>/row", views.inspect_row, name="inspect-row"),
]
