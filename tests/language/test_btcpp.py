"""Mission trees as BehaviorTree.CPP v4 XML: the export follows that format's rules, and a round
trip YAML -> XML -> YAML gives the same tree; what cannot be mapped back is named at its line."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from orbitree.behaviours.catalogue import default_registry, load_mission
from orbitree.cli import main
from orbitree.language.btcpp import BUILTIN_PORTS, from_btcpp, to_btcpp
from orbitree.language.errors import MissionError

ROOT = Path(__file__).resolve().parents[2]
MISSIONS = [ROOT / "missions" / "sirom_dock.yaml", ROOT / "missions" / "demo_checkout.yaml",
            ROOT / "tests" / "missions" / "search_only.yaml"]
DECORATORS = {"RetryUntilSuccessful", "Repeat", "Timeout", "Inverter", "RunOnce"}


def check_btcpp_v4(text: str) -> None:
    """The rules of BehaviorTree.CPP's v4 XML this test holds the export to."""
    root = ET.fromstring(text)
    assert root.tag == "root" and root.get("BTCPP_format") == "4"
    trees = {t.get("ID"): t for t in root.findall("BehaviorTree")}
    assert trees and None not in trees and root.get("main_tree_to_execute") in trees
    models = {m.get("ID"): (m.tag, {p.get("name") for p in m.findall("input_port")})
              for m in root.find("TreeNodesModel")}
    assert all(kind in ("Action", "Condition", "Control", "Decorator") for kind, _ in models.values())

    def visit(node: ET.Element) -> None:
        attrs = set(node.attrib) - {"name"}
        if node.tag in BUILTIN_PORTS:
            assert attrs <= set(BUILTIN_PORTS[node.tag]), (node.tag, attrs)
            if node.tag == "SubTree":
                assert node.get("ID") in trees and len(node) == 0
            elif node.tag in DECORATORS:
                assert len(node) == 1, node.tag
            else:
                assert len(node) >= 1, node.tag
        else:
            assert node.tag in models, f"<{node.tag}> is not declared in TreeNodesModel"
            kind, ports = models[node.tag]
            assert attrs <= ports, (node.tag, attrs - ports)  # ports as attributes, each declared
            expected = {"Action": 0, "Condition": 0, "Decorator": 1}.get(kind)
            assert len(node) == expected if expected is not None else len(node) >= 1, node.tag
        for child in node:
            visit(child)

    for tree in trees.values():
        assert len(tree) == 1  # one root node per tree
        visit(tree[0])


def _structure(spec) -> list:
    return [(s.kind, s.name, s.params.model_dump(exclude={"name", "children", "child"})) for s in spec.walk()]


@pytest.mark.parametrize("path", MISSIONS, ids=lambda p: p.name)
def test_export_follows_btcpp_v4_and_round_trips_to_the_same_tree(path, tmp_path):
    mission = load_mission(path)
    xml = to_btcpp(mission.root, default_registry(), mission.name, mission.recovery)
    check_btcpp_v4(xml)
    back = from_btcpp(xml, "tree.xml", default_registry())
    data = yaml.safe_load(path.read_text())
    data.update(back)
    if "subtrees" not in back:
        data.pop("subtrees", None)
    rebuilt = tmp_path / path.name
    rebuilt.write_text(yaml.safe_dump(data, sort_keys=False))
    for block in (ROOT / "missions" / "blocks").glob("*.yaml"):  # includes resolve beside the file
        (tmp_path / "blocks").mkdir(exist_ok=True)
        (tmp_path / "blocks" / block.name).write_text(block.read_text())
    again = load_mission(rebuilt)
    assert _structure(again.root) == _structure(mission.root)
    if mission.recovery is not None:
        assert _structure(again.recovery) == _structure(mission.recovery)


def test_the_flagships_subtrees_are_trees_of_their_own_and_its_leaves_are_declared(capsys):
    assert main(["tree", str(MISSIONS[0]), "--format", "btcpp"]) == 0
    root = ET.fromstring(capsys.readouterr().out)
    ids = [t.get("ID") for t in root.findall("BehaviorTree")]
    assert ids == ["sirom-dock", "sirom-dock recovery", "dock sequence", "find and approach", "sweep the table",
                   "safe retreat"]
    declared = {m.get("ID") for m in root.find("TreeNodesModel")}
    assert set(default_registry().leaves) <= declared and "ParallelPolicy" in declared
    ports = {p.get("name") for p in root.find("TreeNodesModel").find("Action[@ID='approach']")}
    assert {"robot", "target", "gain", "max_speed", "contact_guard"} <= ports


def test_import_names_the_line_of_what_it_cannot_map(tmp_path, capsys):
    xml = tmp_path / "t.xml"
    xml.write_text('<root BTCPP_format="4">\n  <BehaviorTree ID="main">\n    <Sequence>\n'
                   '      <wait duration="1 s"/>\n      <MoveBase goal="1;2;3"/>\n'
                   '      <SubTree ID="missing"/>\n    </Sequence>\n  </BehaviorTree>\n</root>\n')
    with pytest.raises(MissionError) as error:
        from_btcpp(xml.read_text(), str(xml), default_registry())
    assert [f"{d.line}:{d.col}" for d in error.value.diagnostics] == ["5:7", "6:7"]
    assert "<MoveBase>: no orbitree node kind maps to it" in str(error.value)
    assert main(["import-btcpp", str(xml)]) == 2
    assert f"{xml}:6:7: <SubTree ID='missing'>: no <BehaviorTree> with that ID" in capsys.readouterr().err
    xml.write_text("<root BTCPP_format='4'><BehaviorTree ID='a'>")
    assert main(["import-btcpp", str(xml)]) == 2
    assert "not well-formed XML" in capsys.readouterr().err
