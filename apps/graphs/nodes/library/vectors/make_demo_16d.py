"""Writes demo_16d.json, WordVector's bundled vectors: our own small table of 16 meaning axes.

Each word is described by hand on named axes (royalty, gender, human, animal ...), then every
number gets a little seeded noise so the table looks like learnt vectors rather than a grid.
The analogy king - man + woman lands nearest queen and cat sits near dog because of how the
words are described here. Rerun after editing WORDS:

    .venv/bin/python apps/graphs/nodes/library/vectors/make_demo_16d.py
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy

AXES = ("royalty", "gender", "human", "animal", "young", "divine", "pet", "family", "water",
        "sky", "big", "vehicle", "food", "weather", "motion", "mind")

# gender: + male, - female; big: + large, - small. Axes a word does not name are 0.
WORDS = {
    "king": dict(royalty=1, gender=.7, human=1, big=.2),
    "queen": dict(royalty=1, gender=-.7, human=1, big=.2),
    "prince": dict(royalty=.8, gender=.7, human=1, young=.6),
    "princess": dict(royalty=.8, gender=-.7, human=1, young=.6),
    "duke": dict(royalty=.55, gender=.7, human=1),
    "duchess": dict(royalty=.55, gender=-.7, human=1),
    "emperor": dict(royalty=1, gender=.7, human=1, big=.6),
    "empress": dict(royalty=1, gender=-.7, human=1, big=.6),
    "man": dict(gender=.7, human=1),
    "woman": dict(gender=-.7, human=1),
    "boy": dict(gender=.7, human=1, young=.8),
    "girl": dict(gender=-.7, human=1, young=.8),
    "child": dict(human=1, young=.9),
    "baby": dict(human=1, young=1, big=-.5),
    "father": dict(gender=.7, human=1, family=.8),
    "mother": dict(gender=-.7, human=1, family=.8),
    "brother": dict(gender=.7, human=1, family=.7, young=.2),
    "sister": dict(gender=-.7, human=1, family=.7, young=.2),
    "son": dict(gender=.7, human=1, family=.7, young=.5),
    "daughter": dict(gender=-.7, human=1, family=.7, young=.5),
    "uncle": dict(gender=.7, human=1, family=.5),
    "aunt": dict(gender=-.7, human=1, family=.5),
    "husband": dict(gender=.7, human=1, family=.6),
    "wife": dict(gender=-.7, human=1, family=.6),
    "god": dict(divine=1, gender=.7, big=.6, sky=.3),
    "goddess": dict(divine=1, gender=-.7, big=.6, sky=.3),
    "angel": dict(divine=.8, sky=.6, human=.3),
    "cat": dict(animal=1, pet=.9, big=-.3),
    "dog": dict(animal=1, pet=.9, big=-.1),
    "kitten": dict(animal=1, pet=.9, big=-.5, young=.8),
    "puppy": dict(animal=1, pet=.9, big=-.3, young=.8),
    "rabbit": dict(animal=1, pet=.3, big=-.6),
    "mouse": dict(animal=1, pet=.2, big=-.8),
    "horse": dict(animal=1, pet=.5, big=.6, motion=.3),
    "cow": dict(animal=1, pet=.4, big=.6, food=.2),
    "lion": dict(animal=1, big=.7, royalty=.2),
    "tiger": dict(animal=1, big=.7),
    "fox": dict(animal=1, big=-.1),
    "wolf": dict(animal=1, big=.3),
    "bird": dict(animal=1, sky=.8, big=-.5),
    "eagle": dict(animal=1, sky=.9, big=.1),
    "owl": dict(animal=1, sky=.7, big=-.3),
    "sparrow": dict(animal=1, sky=.8, big=-.8),
    "fish": dict(animal=1, water=.9, big=-.4, food=.3),
    "shark": dict(animal=1, water=1, big=.6),
    "whale": dict(animal=1, water=1, big=1),
    "dolphin": dict(animal=1, water=1, big=.4),
    "ant": dict(animal=.8, big=-1),
    "bee": dict(animal=.8, big=-1, sky=.5),
    "butterfly": dict(animal=.8, big=-.8, sky=.6),
    "fly": dict(animal=.4, big=-1, sky=.6, motion=.5),
    "car": dict(vehicle=1, motion=.3),
    "bus": dict(vehicle=1, big=.5, motion=.3),
    "truck": dict(vehicle=1, big=.6, motion=.3),
    "bike": dict(vehicle=.8, big=-.4, motion=.4),
    "train": dict(vehicle=1, big=.8, motion=.4),
    "boat": dict(vehicle=.9, water=.7, motion=.3),
    "ship": dict(vehicle=1, water=.8, big=.7, motion=.3),
    "plane": dict(vehicle=1, sky=.9, big=.5, motion=.4),
    "apple": dict(food=1, big=-.4),
    "bread": dict(food=1),
    "cheese": dict(food=1, pet=.1),
    "pizza": dict(food=1, big=.1),
    "cake": dict(food=1, big=-.1),
    "rice": dict(food=1, big=-.5),
    "rain": dict(weather=1, water=.6, sky=.4),
    "snow": dict(weather=1, water=.4, sky=.4),
    "wind": dict(weather=1, sky=.5, motion=.4),
    "cloud": dict(weather=.8, sky=.8),
    "sun": dict(weather=.7, sky=.9, big=.9),
    "tree": dict(big=.6, weather=.3, food=.1),
    "run": dict(motion=1, human=.2),
    "walk": dict(motion=.8, human=.2),
    "jump": dict(motion=.9, sky=.3),
    "swim": dict(motion=.9, water=.7),
    "think": dict(mind=1, human=.3),
    "remember": dict(mind=1, human=.2),
    "imagine": dict(mind=1, human=.2, divine=.1),
    "dream": dict(mind=.9, human=.2, sky=.2),
}

NOISE = 0.04   # the spread of the seeded noise on every number
SEED = 16


def table() -> dict:
    rng = numpy.random.default_rng(SEED)
    vectors = {}
    for word, meaning in WORDS.items():
        base = numpy.array([float(meaning.get(axis, 0.0)) for axis in AXES])
        vectors[word] = [round(float(v), 3) for v in base + rng.normal(0.0, NOISE, len(AXES))]
    return {"name": "demo-16d", "axes": list(AXES), "vectors": vectors}


if __name__ == "__main__":
    out = Path(__file__).with_name("demo_16d.json")
    data = table()
    rows = ",\n".join(f"  {json.dumps(w)}: {json.dumps(v)}" for w, v in data["vectors"].items())
    out.write_text(f'{{"name": {json.dumps(data["name"])}, "axes": {json.dumps(data["axes"])},\n'
                   f' "vectors": {{\n{rows}\n }}}}\n')
    print(f"{out}: {len(WORDS)} words, {len(AXES)} numbers each")
