//! What a `<model>` asks of the model it names (DESIGN §12): a setting the model does
//! not take, by the capability table (`stdlib/models.json`), is left out of the request
//! at run time; the author hears about it here, at the attribute.

use super::Checker;
use crate::ast::Task;
use crate::diag::Diagnostic;
use crate::source::Span;
use tv_stdlib::models::{left_out, parse_model, Provider, Setting};

impl Checker<'_, '_> {
    /// A warning at each setting of the task's `<model>` that its model does not take.
    /// Only a model named in the same task is judged: the run's model is not known here,
    /// and the runtime says the same in `notes.warnings` for whatever model answers.
    pub(super) fn check_model_settings(&mut self, task: &Task) {
        let Some(model) = &task.model else {
            return;
        };
        let Ok(named) = parse_model(&model.node) else {
            return;
        };
        let stated = task
            .provider
            .as_ref()
            .and_then(|p| Provider::parse(&p.node));
        let Some(provider) = named.provider.or(stated) else {
            return;
        };
        let s = task.model_settings();
        let spans: [(Setting, Option<Span>); 4] = [
            (Setting::Temperature, s.temperature.as_ref().map(|t| t.span)),
            (Setting::TopP, s.top_p.as_ref().map(|t| t.span)),
            (Setting::Stop, s.stop.as_ref().map(|t| t.span)),
            (Setting::Seed, s.seed.as_ref().map(|t| t.span)),
        ];
        let set: Vec<Setting> = spans
            .iter()
            .filter_map(|(setting, span)| span.map(|_| *setting))
            .collect();
        for left in left_out(provider, &named.name, &set) {
            let Some(span) = spans
                .iter()
                .find(|(setting, _)| *setting == left.setting)
                .and_then(|(_, span)| *span)
            else {
                continue;
            };
            let name = left.setting.as_str();
            self.diags.push(
                Diagnostic::warning(
                    span,
                    format!("{}: the request leaves `{name}` out", left.why),
                )
                .with_secondary(model.span, "the model is named here")
                .with_help(format!(
                    "remove `{name}`, or name a model that takes it (the capability table, stdlib/models.json, says which settings each model takes)"
                )),
            );
        }
    }
}
