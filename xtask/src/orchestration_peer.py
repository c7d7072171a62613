"""The peers' side of `cargo xtask bench --orchestration`: the same pass-through pipeline
(screen, analyse, search, grade, answer; the search returns the same 20 fixed hits at once and
every other step passes its state on) as a LangGraph graph and as a LlamaIndex workflow, timed
per question on one thread.

    python orchestration_peer.py QUESTIONS_JSON SECONDS
prints one JSON line: {"langgraph": {...}, "llamaindex": {...}, "versions": "..."}.
"""
import asyncio
import json
import statistics
import sys
import time
from importlib.metadata import version
from typing import TypedDict

HITS = [
    {"id": f"doc-{i}", "title": f"Title {i}", "text": f"Text of document {i}.", "score": 1.0 - i / 20}
    for i in range(20)
]


class State(TypedDict):
    question: str
    intent: str
    analysis: dict
    hits: list
    kept: list
    answer: str


def langgraph_app():
    from langgraph.graph import END, START, StateGraph

    def screen(state):
        return {"intent": "search"}

    def analyse(state):
        return {"analysis": {"type": "factual"}}

    def search(state):
        return {"hits": list(HITS)}

    def grade(state):
        return {"kept": state["hits"]}

    def answer(state):
        return {"answer": f"{state['kept'][0]['title']} [1]"}

    graph = StateGraph(State)
    steps = [("screen", screen), ("analyse", analyse), ("search", search), ("grade", grade), ("answer", answer)]
    for name, step in steps:
        graph.add_node(name, step)
    graph.add_edge(START, steps[0][0])
    for (a, _), (b, _) in zip(steps, steps[1:]):
        graph.add_edge(a, b)
    graph.add_edge(steps[-1][0], END)
    app = graph.compile()

    def run(question):
        return app.invoke({"question": question, "intent": "", "analysis": {}, "hits": [], "kept": [], "answer": ""})

    return run


def llamaindex_run():
    from llama_index.core.workflow import Event, StartEvent, StopEvent, Workflow, step

    class Screened(Event):
        question: str

    class Analysed(Event):
        question: str

    class Searched(Event):
        hits: list

    class Graded(Event):
        kept: list

    class Pipeline(Workflow):
        @step
        async def screen(self, ev: StartEvent) -> Screened:
            return Screened(question=ev.question)

        @step
        async def analyse(self, ev: Screened) -> Analysed:
            return Analysed(question=ev.question)

        @step
        async def search(self, ev: Analysed) -> Searched:
            return Searched(hits=list(HITS))

        @step
        async def grade(self, ev: Searched) -> Graded:
            return Graded(kept=ev.hits)

        @step
        async def answer(self, ev: Graded) -> StopEvent:
            return StopEvent(result=f"{ev.kept[0]['title']} [1]")

    workflow = Pipeline(timeout=60, verbose=False)

    async def run(question):
        return await workflow.run(question=question)

    return run


def timed(run_one, questions, seconds):
    """Per-question milliseconds: a warm-up pass, then passes until `seconds` have gone by."""
    for q in questions[:20]:
        run_one(q)
    samples = []
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        for q in questions:
            t = time.perf_counter()
            run_one(q)
            samples.append((time.perf_counter() - t) * 1000)
    samples.sort()
    return {
        "questions": len(samples),
        "mean_ms": statistics.fmean(samples),
        "p50_ms": samples[len(samples) // 2],
        "p99_ms": samples[min(len(samples) - 1, int(len(samples) * 0.99))],
    }


def main():
    questions = json.load(open(sys.argv[1]))
    seconds = float(sys.argv[2])
    graph = langgraph_app()
    loop = asyncio.new_event_loop()
    workflow = llamaindex_run()
    figures = {
        "langgraph": timed(graph, questions, seconds),
        "llamaindex": timed(lambda q: loop.run_until_complete(workflow(q)), questions, seconds),
        "versions": f"langgraph {version('langgraph')}, llama-index-core {version('llama-index-core')}, "
        f"Python {sys.version.split()[0]}",
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
