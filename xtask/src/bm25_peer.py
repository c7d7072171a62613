"""bm25s on a BEIR corpus, as `cargo xtask bench --bm25` compares it with Ferret's BM25.

Arguments: the dataset folder, a JSON file of [id, text] queries, the largest k, and where to
write each query's ranked ids. Indexes title and text (English stemming and stop words, as
Ferret does), then retrieves one query at a time on one thread, timing k = 10 and the largest
k, and once more as one batch. Prints one JSON object of timings.
"""

import json
import sys
import time

import bm25s
import Stemmer


def main():
    dataset, queries_path, k_max, ranked_path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    ids, texts = [], []
    with open(f"{dataset}/corpus.jsonl") as f:
        for line in f:
            doc = json.loads(line)
            ids.append(doc["_id"])
            texts.append(f"{doc.get('title', '')} {doc.get('text', '')}".strip())
    queries = json.load(open(queries_path))
    stemmer = Stemmer.Stemmer("english")

    start = time.perf_counter()
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False),
                    show_progress=False)
    index_seconds = time.perf_counter() - start

    def one_at_a_time(k, passes):
        start = time.perf_counter()
        ranked = []
        for _ in range(passes):
            ranked = []
            for _, text in queries:
                tokens = bm25s.tokenize([text], stopwords="en", stemmer=stemmer, show_progress=False)
                docs, _ = retriever.retrieve(tokens, k=k, n_threads=1, show_progress=False)
                ranked.append([ids[i] for i in docs[0]])
        seconds = time.perf_counter() - start
        return len(queries) * passes / seconds, ranked

    def batch(k):
        start = time.perf_counter()
        tokens = bm25s.tokenize([t for _, t in queries], stopwords="en", stemmer=stemmer,
                                show_progress=False)
        retriever.retrieve(tokens, k=k, n_threads=1, show_progress=False)
        return len(queries) / (time.perf_counter() - start)

    one_at_a_time(10, 1)  # warm up
    per_second = {}
    ranked = None
    for k in sorted({10, k_max}):
        qps, ranked_k = one_at_a_time(k, 3)
        per_second[str(k)] = {"one_at_a_time": qps, "batch": batch(k)}
        if k == k_max:
            ranked = ranked_k
    json.dump({qid: r for (qid, _), r in zip(queries, ranked)}, open(ranked_path, "w"))
    print(json.dumps({
        "version": f"bm25s {bm25s.__version__}, PyStemmer {Stemmer.__version__ if hasattr(Stemmer, '__version__') else ''}".strip(),
        "index_seconds": index_seconds,
        "queries_per_second": per_second,
    }))


if __name__ == "__main__":
    main()
