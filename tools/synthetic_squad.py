#!/usr/bin/env python3
"""synthetic_squad.py — a synthetic SQuAD v1.1 set for quick question-answering checks (the int8
accuracy figures of docs/int8.md, in docs/benchmarks.md): short contexts about made-up people (where they
live, what they eat, what they play, their colour), three or four questions each, answers spans
of the context. Deterministic for a seed.

  python3 tools/synthetic_squad.py OUT_DIR [--train N] [--dev N] [--seed S]
writes OUT_DIR/train.json, OUT_DIR/dev.json (SQuAD v1.1) and OUT_DIR/corpus.txt (the contexts, a
pretraining corpus: one sentence a line, a blank line between contexts)."""
import argparse, json, os, random

NAMES = "anna tom maria paul lena omar sara ivan nina leo emma hugo clara felix rosa yuki".split()
CITIES = "paris rome london madrid berlin oslo lisbon vienna prague dublin athens cairo".split()
FOODS = "fish bread rice apples soup cheese pasta eggs beans cake".split()
GAMES = "piano drums chess tennis football guitar violin cards".split()
COLOURS = "red blue green yellow black white orange purple".split()


def context(rng):
    a, b = rng.sample(NAMES, 2)
    f = {"ac": rng.choice(CITIES), "bc": rng.choice(CITIES), "af": rng.choice(FOODS), "bf": rng.choice(FOODS),
         "ag": rng.choice(GAMES), "bk": rng.choice(COLOURS)}
    # each sentence with the questions it answers: (question, answer, the text before the answer)
    sents = [(f"{a} lives in {f['ac']} and eats {f['af']} every morning.",
              [(f"where does {a} live?", f"{a} lives in "), (f"what does {a} eat every morning?", " and eats ")]),
             (f"{b} lives in {f['bc']} and likes {f['bf']} at night.",
              [(f"where does {b} live?", f"{b} lives in "), (f"what does {b} like at night?", " and likes ")]),
             (f"{a} plays the {f['ag']} with friends from the school.", [(f"what does {a} play?", " plays the ")]),
             (f"the favourite colour of {b} is {f['bk']}.", [(f"what is the favourite colour of {b}?", f"{b} is ")])]
    rng.shuffle(sents)
    text, qs = "", []
    for sent, questions in sents:
        base = len(text) + (1 if text else 0)
        text = f"{text} {sent}" if text else sent
        for q, cue in questions:
            start = base + sent.index(cue) + len(cue)
            qs.append((q, text[start:].split()[0].rstrip("."), start))
    rng.shuffle(qs)
    return text, [s for s, _ in sents], qs[:rng.randint(3, 4)]


def squad(rng, n_questions, prefix):
    paragraphs, corpus, k = [], [], 0
    while k < n_questions:
        text, sents, qs = context(rng)
        qas = []
        for q, ans, start in qs:
            assert text[start:start + len(ans)] == ans
            qas.append({"id": f"{prefix}{k}", "question": q, "answers": [{"text": ans, "answer_start": start}]})
            k += 1
        paragraphs.append({"context": text, "qas": qas})
        corpus.append("\n".join(sents))
    return {"version": "1.1", "data": [{"title": "synthetic", "paragraphs": paragraphs}]}, corpus


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--train", type=int, default=600)
    ap.add_argument("--dev", type=int, default=200)
    ap.add_argument("--seed", type=int, default=29)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = random.Random(a.seed)
    train, corpus = squad(rng, a.train, "t")
    dev, corpus_dev = squad(rng, a.dev, "d")
    for name, doc in (("train.json", train), ("dev.json", dev)):
        with open(os.path.join(a.out, name), "w") as f:
            json.dump(doc, f)
    with open(os.path.join(a.out, "corpus.txt"), "w") as f:
        f.write("\n\n".join(corpus + corpus_dev) + "\n")


if __name__ == "__main__":
    main()
