use ferret_core::{Event, Trace, TraceStep};
use tokio::sync::mpsc::UnboundedSender;

/// Writes each step to the trace and, when someone listens, to the event stream, so the two
/// never disagree.
pub(crate) struct Recorder {
    pub(crate) trace: Trace,
    events: Option<UnboundedSender<Event>>,
}

impl Recorder {
    pub(crate) fn new(events: Option<UnboundedSender<Event>>) -> Self {
        Self { trace: Trace::default(), events }
    }

    pub(crate) fn step(&mut self, step: TraceStep) {
        tracing::debug!(?step, "stage step");
        self.emit(Event::Step { step: step.clone() });
        self.trace.push(step);
    }

    pub(crate) fn emit(&self, event: Event) {
        if let Some(events) = &self.events {
            // A listener that went away does not stop the search.
            let _ = events.send(event);
        }
    }
}
