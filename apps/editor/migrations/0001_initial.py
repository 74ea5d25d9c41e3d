"""Tab moves here from apps.graphs: Django's state changes, the table (graphs_tab) stays."""
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import apps.graphs.models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("graphs", "0003_tab_active_segment"),
        ("runs", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.CreateModel(
                name="Tab",
                fields=[
                    ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                    ("title", models.CharField(max_length=80)),
                    ("position", models.PositiveIntegerField(default=0)),
                    ("document", models.JSONField(default=apps.graphs.models.blank_document)),
                    ("undo_stack", models.JSONField(default=list)),
                    ("redo_stack", models.JSONField(default=list)),
                    ("active_segment", models.CharField(blank=True, max_length=200)),
                    ("created", models.DateTimeField(auto_now_add=True)),
                    ("graph", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL,
                                                related_name="tabs", to="graphs.graph")),
                    ("last_run", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL,
                                                   related_name="+", to="runs.run")),
                    ("owner", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="tabs",
                                                to=settings.AUTH_USER_MODEL)),
                ],
                options={"db_table": "graphs_tab", "ordering": ["position", "pk"]},
            ),
        ]),
    ]
