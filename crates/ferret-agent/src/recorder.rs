use ferret_core::{Event, Implementation, LlmCall, StageOutput, Trace, TraceStep, Usage};
use tokio::sync::mpsc::UnboundedSender;

/// Writes each step to the trace and, when someone listens, to the event stream, so the two
/// never disagree; adds up what the stages' model calls spent.
pub(crate) struct Recorder {
    pub(crate) trace: Trace,
    /// The LLM part of the search's usage: calls, tokens, cost.
    pub(crate) llm: Usage,
    events: Option<UnboundedSender<Event>>,
}

impl Recorder {
    pub(crate) fn new(events: Option<UnboundedSender<Event>>) -> Self {
        Self {
            trace: Trace::default(),
            llm: Usage::default(),
            events,
        }
    }

    pub(crate) fn step(&mut self, step: TraceStep) {
        tracing::debug!(?step, "stage step");
        self.emit(|| Event::Step { step: step.clone() });
        self.trace.push(step);
    }

    /// Send the event `event` builds, built only when someone listens: most searches have no
    /// listener, and an event copies hits or the whole response.
    pub(crate) fn emit(&self, event: impl FnOnce() -> Event) {
        if let Some(events) = &self.events {
            // A listener that went away does not stop the search.
            let _ = events.send(event());
        }
    }

    /// Where events go, for a stage that reports pieces of its work as they come (the answer as
    /// the model writes it); `None` when nobody listens.
    pub(crate) fn listener(&self) -> Option<UnboundedSender<Event>> {
        self.events.clone()
    }

    /// Record a stage's model calls (each a trace step, all in the usage) and hand back its result.
    pub(crate) fn stage<T>(&mut self, output: StageOutput<T>) -> (T, Implementation) {
        for call in output.llm_calls {
            self.llm_call(call);
        }
        (output.value, output.implementation)
    }

    fn llm_call(&mut self, call: LlmCall) {
        self.llm.llm_calls += call.requests;
        self.llm.prompt_tokens += call.prompt_tokens;
        self.llm.completion_tokens += call.completion_tokens;
        self.llm.cost_usd += call.cost_usd;
        self.step(TraceStep::LlmCall(call));
    }

    /// LLM tokens spent so far, prompt and completion.
    pub(crate) fn llm_tokens(&self) -> u64 {
        self.llm.prompt_tokens + self.llm.completion_tokens
    }
}
