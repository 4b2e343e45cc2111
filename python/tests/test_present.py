"""ragform.present: a profile from `ragform tune` applied to records, the same bytes as
`ragform present --json` (both call tune::present; docs/tune.md)."""
import json

import pytest

import ragform


DIMENSIONS = ["delimiter", "p", "format", "order", "k", "spotlight"]


def profile(task="qa", **presentation):
    return {"format": "ragform-tune-profile", "schema_version": 1,
            "presentation": presentation,
            "searched": [d for d in DIMENSIONS if d in presentation],
            "model": "stories260K.gguf", "model_sha256": "", "reader": "native", "task": task,
            "objective": "accuracy", "run": {"store": "tune.sqlite", "id": 1}}


PROFILES = [
    profile(),
    profile(delimiter="-", p=0.5, format_seed=3, format="json", order="reversed", k=1),
    profile(format="html", order="edges"),
    profile(spotlight=2, spotlight_tokens=True),
    profile("needle", delimiter="&", p=1.0, format="markdown"),
]


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")
    return path


@pytest.mark.parametrize("prof", PROFILES, ids=lambda p: json.dumps(p["presentation"]))
def test_present_equals_cli(prof, model, model_path, cli, tmp_path, nq_records):
    recs = nq_records[:4]
    pf = tmp_path / "profile.json"
    pf.write_text(json.dumps(prof))
    inp = write_jsonl(tmp_path / "recs.jsonl", recs)
    lines = cli("present", "--json", "--profile", pf, "--input", inp, "-m", model_path,
                json_out=False).splitlines()
    assert len(lines) == len(recs)
    for n, (rec, line) in enumerate(zip(recs, lines), 1):
        got = ragform.present(rec, prof, model=model)
        if "id" not in rec:  # named by its line in the file, and 1 as Python's one record
            assert json.loads(line)["id"].endswith(f":{n}") and got["id"].endswith(":1")
            got["id"] = json.loads(line)["id"]
        # The same bytes as the CLI's line (keys in order, UTF-8, compact).
        assert json.dumps(got, ensure_ascii=False, separators=(",", ":")) == line
        assert got["prompt_tokens"] > 0
        assert got["id"] == json.loads(line)["id"] != ""
    # A profile file's path gives the same as its JSON, without a model no token count.
    bare = ragform.present(recs[0], pf)
    assert bare == {k: v for k, v in json.loads(lines[0]).items() if k != "prompt_tokens"}
    assert ragform.present(recs[0], str(pf)) == bare


def test_a_record_without_an_id_is_named_by_its_line(cli, tmp_path, nq_records):
    """Issue 40, pass 20: every record without an id was "<format>:0"; now its line in the file,
    as every other command names it, and 1 for Python's one record."""
    recs = [{k: v for k, v in r.items() if k not in ("id", "_id")} for r in nq_records[:3]]
    pf = tmp_path / "profile.json"
    pf.write_text(json.dumps(profile()))
    inp = write_jsonl(tmp_path / "recs.jsonl", recs)
    ids = [json.loads(l)["id"] for l in cli("present", "--json", "--profile", pf, "--input", inp,
                                            json_out=False).splitlines()]
    assert [i.rsplit(":", 1)[1] for i in ids] == ["1", "2", "3"], ids
    assert ragform.present(recs[0], profile())["id"] == ids[0]


def test_profiles_change_the_prompt(nq_records):
    prompts = {ragform.present(nq_records[0], p)["prompt"] for p in PROFILES}
    assert len(prompts) == len(PROFILES)


def test_bad_inputs_raise(tmp_path, nq_records):
    with pytest.raises(ValueError, match=r"^record cb has no documents \(ctxs\) to present$"):
        ragform.present({"id": "cb", "question": "Who?", "answers": ["x"]}, profile())
    with pytest.raises(ValueError, match="not a QA record"):
        ragform.present({"title": "t"}, profile())
    with pytest.raises(ValueError, match="profile: presentation: order: unknown order 'sideways'"):
        ragform.present(nq_records[0], profile(order="sideways"))
    with pytest.raises(ValueError, match="spotlight selection keeps the sentences as written"):
        ragform.present(nq_records[0], profile(spotlight=2, delimiter="-", p=0.5))
    # Issue 40, item 12: a delimiter without its ratio, marks without spans, a misspelt key.
    with pytest.raises(ValueError, match="p: missing: delimiter 'none' needs the share"):
        ragform.present(nq_records[0], profile(delimiter="none"))
    with pytest.raises(ValueError, match="spotlight_tokens: true needs spotlight K >= 1"):
        ragform.present(nq_records[0], profile(spotlight_tokens=True))
    with pytest.raises(ValueError, match="'delimeter' is not supported"):
        ragform.present(nq_records[0], profile(delimeter="-"))
    with pytest.raises(ValueError, match="not a ragform tune profile"):
        ragform.present(nq_records[0], {"best": "-"})
    with pytest.raises(FileNotFoundError):
        ragform.present(nq_records[0], tmp_path / "missing.json")
    with pytest.raises(ValueError, match="the record must be a dict"):
        ragform.present([nq_records[0]], profile())
