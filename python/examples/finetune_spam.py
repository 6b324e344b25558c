# finetune_spam.py — fine-tune a pretrained tessera BERT as a spam filter from Python, then use it.
#   python3 finetune_spam.py PRETRAINED_DIR [SPAM_TSV] [OUT_DIR] [MAX_STEPS]
# PRETRAINED_DIR: a model directory from `tessera pretrain` (`make demo` leaves one in
# build/demo/pretrained); SPAM_TSV: label<TAB>text rows (default data/spam/spam.tsv); MAX_STEPS 0: all.
import os
import sys

import tessera

here = os.path.dirname(os.path.abspath(__file__))
pretrained = sys.argv[1]
data = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "..", "..", "data", "spam", "spam.tsv")
out = sys.argv[3] if len(sys.argv) > 3 else "spam-model"
max_steps = int(sys.argv[4]) if len(sys.argv) > 4 else 0


def show(row):  # every metrics row: the losses as they come, and the test accuracy
    if "test_accuracy" in row:
        print("test accuracy %.2f%% after %d steps" % (100 * row["test_accuracy"], row.get("step", 0)))


# the rows are deduplicated and split 80 / 20 (seed 42), as `tessera finetune` does
tessera.train(pretrained, data, out, epochs=2, batch=16, lr=1e-4, max_steps=max_steps,
              callback=show, verbose=False)

spam_filter = tessera.bert.Classifier.load(out)
mails = ["Congratulations! You have won a FREE cruise. Click here to claim your prize now!!!",
         "Hi Tom, the meeting moved to 3pm tomorrow; I attached the updated slides."]
for result, mail in zip(spam_filter.predict(mails), mails):  # {"label", "score"} a mail, as transformers
    print("%-4s %.3f  %s" % (result["label"], result["score"], mail[:60]))
