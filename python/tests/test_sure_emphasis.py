"""sure.evaluate(emphasis_gold=F) writes the run `ragform sure eval --emphasis-gold F` writes (the
CLI resumes it with nothing left to do, and the rows are steered ones), apart from the unsteered
run in the same store."""
import json

import ragform


def test_sure_evaluate_emphasis_gold_is_the_clis(model, model_path, cli, tmp_path, nq_records):
    pairs = ragform.sure.perturb(nq_records[:2], kinds="format/json", docs=1)
    store = tmp_path / "sure.sqlite"
    plain = ragform.sure.evaluate(model, pairs, store=store, max_tokens=8, progress=False)
    steered = ragform.sure.evaluate(model, pairs, store=store, max_tokens=8, progress=False,
                                    emphasis_gold=8)
    assert steered["run"] != plain["run"]
    assert steered["stats"]["generated"] == 2 + 2 + len(pairs)
    pf = tmp_path / "pairs.jsonl"
    pf.write_text("".join(json.dumps(p) + "\n" for p in pairs))
    r = cli("sure", "eval", "-m", model_path, "--input", pf, "--store", store, "-n", 8,
            "--emphasis-gold", 8, json_out=False)
    assert [json.loads(x) for x in r.splitlines()] == steered["groups"]
    st = ragform.RunStore(store)
    assert len(st.runs()) == 2
    rows = st.rows(steered["run"])
    rag = [r for r in rows if r["variant"] != "closed-book"]
    assert len(rag) == 2 + len(pairs) and all("steer_spans" in r["extra"] for r in rag)
    assert not any("steer_spans" in r["extra"] for r in st.rows(plain["run"]))
