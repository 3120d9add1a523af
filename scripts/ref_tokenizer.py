"""Writes a Hugging Face tokenizer directory that counts exactly as the pinbench reference
server does (refserver/src/tokenizer.rs): a token is an optional single space plus a run
of ASCII letters/digits, an optional single space plus one other non-whitespace
character, or one whitespace character. Other tools (vLLM bench, AIPerf, guidellm) load it
offline with --tokenizer DIR, so their prompt lengths are the server's.

Every piece of the texts the tools build prompts from (AIPerf's corpus files given as
arguments, Faker's lorem words for guidellm) is in the vocabulary, so a prompt a tool
decodes from token ids is the text it counted, and the server counts the same.

Usage: python ref_tokenizer.py OUT_DIR [CORPUS_FILE...]
"""
import json
import re
import sys

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

out = sys.argv[1]
vocab = {" unk": 0, "<eos>": 1}
words = [f" w{i}" for i in range(4000)] + [f"w{i}" for i in range(100)]
words += [" " + c for c in "abcdefghijklmnopqrstuvwxyz"] + list("abcdefghijklmnopqrstuvwxyz")
words += [" the", " of", " and", " to", " a", " in", " is", " that", " it", " I", " you"]
words += list(".,;:!?'\"-()[]{}") + [" " + c for c in ".,;:!?'\"-()"] + [" ", "\n", "\t"]
PIECE = re.compile(r" ?[A-Za-z0-9]+| ?[^\sA-Za-z0-9]|\s")
texts = [open(f, encoding="utf-8", errors="replace").read() for f in sys.argv[2:]]
try:
    from faker import Faker

    fk = Faker()
    fk.seed_instance(0)
    lorem = fk.get_words_list()
    texts.append(" ".join(lorem + [w.capitalize() for w in lorem]))
    texts.append(" ".join(fk.text(max_nb_chars=2000) for _ in range(200)))
except ImportError:
    pass
for t in texts:
    for p in PIECE.findall(t):
        words.append(p)
        if p.startswith(" "):
            words.append(p[1:])
for w in words:
    vocab.setdefault(w, len(vocab))
tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=" unk"))
tok.pre_tokenizer = pre_tokenizers.Split(
    Regex(r" ?[A-Za-z0-9]+| ?[^\sA-Za-z0-9]|\s"), behavior="isolated"
)
tok.decoder = decoders.Fuse()
tok.save(f"{out}/tokenizer.json")
json.dump(
    {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "eos_token": "<eos>",
        "unk_token": " unk",
        "model_max_length": 1000000,
        "clean_up_tokenization_spaces": False,
        "chat_template": "{% for m in messages %}{{ m['content'] }}{% endfor %}",
    },
    open(f"{out}/tokenizer_config.json", "w"),
)
json.dump({"eos_token": "<eos>", "unk_token": " unk"}, open(f"{out}/special_tokens_map.json", "w"))
print(out)
