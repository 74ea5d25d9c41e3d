"""ApiToken moves here from apps.runs: Django's state changes, the table (runs_apitoken) stays."""
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("runs", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.CreateModel(
                name="ApiToken",
                fields=[
                    ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                    ("digest", models.CharField(max_length=64, unique=True)),
                    ("created", models.DateTimeField(auto_now_add=True)),
                    ("user", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name="api_token",
                                                  to=settings.AUTH_USER_MODEL)),
                ],
                options={"db_table": "runs_apitoken"},
            ),
        ]),
    ]
