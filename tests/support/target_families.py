"""The target family of a config.json, from the family table's checked-in copy (families.json beside this file;
FamilyTable.CheckedInJsonMirrorEqualsTheTable holds it equal to harness/src/arch/family_table.cpp). The Python
references take only the family's name from it: their formulas are their own, so a wrong trait in the table shows
as a difference from the engine instead of being copied."""
import json
import os

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "families.json")) as _f:
    FAMILIES = json.load(_f)["families"]


def family_of(text_config):
    """The family name of a text config's model_type; an unknown one raises ValueError with draftgate's line."""
    model_type = text_config.get("model_type", "")
    for family in FAMILIES:
        if model_type in family["model_types"]:
            return family["name"]
    known = ", ".join(t for f in FAMILIES for t in f["model_types"])
    raise ValueError(f'model_type "{model_type}" is not a target family draftgate knows (known: {known})')


def decoder_root(weights):
    """"model." or "model.language_model.": the module holding embed_tokens, read from the tensor names."""
    roots = [n[:-len("embed_tokens.weight")] for n in weights if n.endswith("embed_tokens.weight")]
    if len(roots) != 1:
        raise ValueError(f"expected one embed_tokens.weight tensor, found {len(roots)}")
    return roots[0]
