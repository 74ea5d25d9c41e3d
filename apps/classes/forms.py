"""The roster's form: students added one of three ways (pasted CSV, a CSV file, typed
names). Reading and checking the list is apps.accounts.roster's; this only picks the way."""
from __future__ import annotations

from django import forms

from apps.accounts import roster

WAYS = ("csv_text", "csv_file", "names")


class AddStudentsForm(forms.Form):
    csv_text = forms.CharField(
        required=False, strip=False, label="Paste a class list (CSV)",
        max_length=roster.MAX_ROSTER_BYTES, widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false"}),
        help_text="One student a row: username, display name and, if you like, a password. "
                  "You can paste straight from a spreadsheet.")
    csv_file = forms.FileField(
        required=False, label="Upload a class list (.csv file)",
        widget=forms.ClearableFileInput(attrs={"accept": ".csv,text/csv,text/plain"}),
        help_text="The same columns: username, display name, password (optional). A first row naming the columns is fine.")
    names = forms.CharField(
        required=False, label="Type the students' names, one on each line",
        max_length=roster.MAX_ROSTER_BYTES, widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false"}),
        help_text="Each student gets a username made from their name (Ada Lovelace: ada-lovelace) and a password.")

    def clean(self):
        data = super().clean()
        given = [way for way in WAYS if data.get(way) and (way == "csv_file" or data[way].strip())]
        if len(given) != 1:
            raise forms.ValidationError("Use one of the three ways to add students: paste a list, upload a file "
                                        "or type names.")
        try:
            if given[0] == "names":
                data["entries"] = roster.parse_names(data["names"])
            elif given[0] == "csv_text":
                data["entries"] = roster.parse_csv(data["csv_text"])
            else:
                upload = data["csv_file"]
                if upload.size > roster.MAX_ROSTER_BYTES:
                    raise roster.RosterError([f"{upload.name} is larger than {roster.MAX_ROSTER_BYTES // 1024} KB; "
                                              "a class list is much smaller."])
                data["entries"] = roster.parse_csv(roster.decode(upload.read()))
        except roster.RosterError as exc:
            raise forms.ValidationError(["Nothing was added. Fix the list and add it again.", *exc.problems]) from None
        data["way"] = given[0]
        return data


class HandoutForm(forms.Form):
    """Hand out a lesson: what (a shipped lesson or one of the teacher's saved graphs) and the
    name the students' tabs get."""

    source = forms.ChoiceField(label="What to hand out", widget=forms.Select(attrs={"aria-describedby": "source-help"}),
                               help_text="A lesson that comes with CodefyUI, or one of the graphs you saved.")
    title = forms.CharField(required=False, max_length=80, label="Name of the students' tab",
                            widget=forms.TextInput(attrs={"aria-describedby": "title-help"}),
                            help_text="Leave it empty to use the lesson's own name.")

    def __init__(self, *args, sources: list, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["source"].choices = [(group, choices) for group, choices in sources if choices]
