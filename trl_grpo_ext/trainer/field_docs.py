"""The documentation of a config dataclass's own fields, rendered from their metadata: each field's `help` (what
`--help` and `TrlParser` print) is its one description; `GRPOExtConfig`'s docstring and docs/config.md
(`trl_grpo_ext.trainer.config_docs`) are rendered from it."""

from __future__ import annotations

import dataclasses
import textwrap


def own_fields(config_class: type, base_class: type) -> list[dataclasses.Field]:
    """The fields `config_class` adds to `base_class`, in declaration order."""
    inherited = {f.name for f in dataclasses.fields(base_class)}
    return [f for f in dataclasses.fields(config_class) if f.name not in inherited]


def sections(
    config_class: type, base_class: type, section_names: dict[str, tuple[str, ...]]
) -> dict[str, list[dataclasses.Field]]:
    """The added fields grouped as `section_names` says (section -> field names); each must be in one, with help."""
    by_name = {f.name: f for f in own_fields(config_class, base_class)}
    listed = [name for names in section_names.values() for name in names]
    if sorted(listed) != sorted(by_name):
        raise ValueError(
            f"the sections list {sorted(listed)}, the fields {config_class.__name__} adds are {sorted(by_name)}: "
            "list each field in one section"
        )
    undocumented = [name for name, f in by_name.items() if not f.metadata.get("help")]
    if undocumented:
        raise ValueError(f"{config_class.__name__} fields without metadata 'help': {', '.join(undocumented)}")
    return {section: [by_name[name] for name in names] for section, names in section_names.items()}


def _type(config_class: type, f: dataclasses.Field) -> str:
    # As written in the class body: HfArgumentParser replaces `Field.type` in place (and strips `| None`).
    for klass in config_class.__mro__:
        annotation = vars(klass).get("__annotations__", {}).get(f.name)
        if annotation is not None:
            return annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    raise ValueError(f"{config_class.__name__}.{f.name} has no annotation")


def _default(f: dataclasses.Field) -> str:
    if f.default is not dataclasses.MISSING:
        return repr(f.default)
    if f.default_factory is not dataclasses.MISSING:
        return repr(f.default_factory())
    return "required"


def docstring_parameters(config_class: type, base_class: type, section_names: dict[str, tuple[str, ...]]) -> str:
    """The parameter list of the class docstring, in the layout of TRL's configs (for `help()` and doc builders)."""
    lines = []
    for section, fields in sections(config_class, base_class, section_names).items():
        lines += ["", f"    {section}:"]
        for f in fields:
            lines.append(f"        {f.name} (`{_type(config_class, f)}`, *optional*, defaults to `{_default(f)}`):")
            lines += textwrap.wrap(f.metadata["help"], 112, initial_indent=" " * 12, subsequent_indent=" " * 12)
    return "\n".join(lines) + "\n"


def markdown_table(config_class: type, base_class: type, section_names: dict[str, tuple[str, ...]]) -> str:
    """One table per section: field, type, default, meaning."""
    out = []
    for section, fields in sections(config_class, base_class, section_names).items():
        out += [f"### {section}", "", "| field | type | default | meaning |", "| --- | --- | --- | --- |"]
        for f in fields:
            cells = [f"`{f.name}`", f"`{_type(config_class, f)}`", f"`{_default(f)}`", f.metadata["help"]]
            out.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
        out.append("")
    return "\n".join(out)
