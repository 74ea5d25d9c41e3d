"""ApiToken now belongs to apps.accounts (its table, runs_apitoken, is kept as it is)."""
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0001_initial"),
        ("accounts", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[migrations.DeleteModel(name="ApiToken")]),
    ]
