//! The fields of a `<task>`: text, flags, enumerations, numbers, models, output format,
//! context management and file paths; the nested parts are in [`super::parts`].

use super::build::Builder;
use super::schema;
use super::*;
use crate::diag::Diagnostic;
use crate::language::{
    self, Count, ElementId as E, FilePathsSource, Number, OnMaxIterations, ValueKind, Words,
};
use crate::parser;
use crate::xml::{Element, Text};
use tv_stdlib::models::{self, Provider};

impl Builder<'_> {
    /// One of a task's fields, `id` in the table, inside `<parent>`.
    pub(super) fn task_field(&mut self, task: &mut Task, el: &Element, id: E, parent: &str) {
        match id {
            E::Description => task.description = Some(self.text_field(el, id)),
            E::Instructions => task.instructions = Some(self.text_field(el, id)),
            E::System => task.system = Some(self.text_field(el, id)),
            E::Criteria => task.criteria = Some(Box::new(self.text_field(el, id))),
            E::InitialValue => task.initial_value = Some(Box::new(self.text_field(el, id))),
            E::Model => {
                task.model_settings = Some(Box::new(self.model_settings(el)));
                task.model = self.model(el);
            }
            E::Provider => task.provider = self.provider(el, id).map(Box::new),
            E::OutputSlot => task.output_slot = Some(Box::new(self.word_field(el, id))),
            E::InputSource => task.input_source = Some(Box::new(self.word_field(el, id))),
            E::OutputFormat => task.output_format = Some(Box::new(self.output_format(el))),
            E::ContextManagement => task.context = Some(Box::new(self.context_management(el))),
            E::FilePaths => task.file_paths = self.file_paths(el).map(Box::new),
            E::Steps => task.steps = Some(self.steps(el)),
            E::Inputs => task.inputs = self.inputs(el, id),
            E::ContextRelevance => task.context_relevance = self.context_relevance(el),
            E::ContextAssembly => task.context_assembly = Some(Box::new(self.context_assembly(el))),
            E::ManualXml => task.manual_xml = self.bool_field(el, id),
            E::DisableReparsing => task.disable_reparsing = self.bool_field(el, id),
            E::MaxIterations => task.max_iterations = self.count_field(el, id),
            E::OnMaxIterations => {
                let on = self.words_field::<OnMaxIterations>(el, id);
                task.on_max_iterations = on.map(|w| w.map(|v| v == OnMaxIterations::Accept));
            }
            E::Subtasks => {
                let on = self.words_field::<FreshContext>(el, id);
                task.subtasks = on.map(|w| w.map(|v| v == FreshContext::Enabled));
            }
            E::Director => task.director = Some(Box::new(self.slot(el, id))),
            E::Evaluator => task.evaluator = Some(Box::new(self.slot(el, id))),
            E::InnerTask => task.inner_task = Some(Box::new(self.slot(el, id))),
            E::ReductionTask => task.reduction_task = Some(Box::new(self.slot(el, id))),
            E::ScriptExecution => task.script = Some(Box::new(self.script(el))),
            E::TerminationCondition => task.termination = Some(Box::new(self.termination(el))),
            // A field of the table without a reader here: as good as unknown.
            _ => schema::unread_element(el, parent, self.diags),
        }
    }

    /// Text with `{{ }}` holes.
    pub(super) fn text_field(&mut self, el: &Element, id: E) -> TextTemplate {
        schema::check_attrs(el, id, self.diags);
        schema::no_elements(el, self.diags);
        parser::parse_template(&el.text(), self.diags)
    }

    /// A plain word: no holes, surrounding white space dropped.
    fn word_field(&mut self, el: &Element, id: E) -> Spanned<String> {
        schema::check_attrs(el, id, self.diags);
        schema::no_elements(el, self.diags);
        let t = el.text();
        Spanned::new(t.trimmed().to_string(), t.trimmed_span())
    }

    fn bool_field(&mut self, el: &Element, id: E) -> Option<Spanned<bool>> {
        let w = self.word_field(el, id);
        self.parse_bool(&w, &format!("<{}>", el.name))
    }

    pub(super) fn parse_bool(&mut self, w: &Spanned<String>, what: &str) -> Option<Spanned<bool>> {
        if let Some(b) = bool::parse(&w.node) {
            return Some(Spanned::new(b, w.span));
        }
        let words = schema::list(&bool::LIST.names().collect::<Vec<_>>(), "`", "`");
        let words = words.replace(", ", " or ");
        self.diags.push(
            Diagnostic::error(
                w.span,
                format!("`{what}` must be {words}, not `{}`", w.node),
            )
            .with_help(format!("boolean fields are written exactly {words}")),
        );
        None
    }

    /// A whole number in the range the table gives the element `id`.
    pub(super) fn count_field(&mut self, el: &Element, id: E) -> Option<Spanned<u64>> {
        let w = self.word_field(el, id);
        let range = match language::element(id).text() {
            Some(ValueKind::Count(range)) => range,
            _ => &language::POSITIVE,
        };
        self.parse_count(&w, &format!("<{}>", el.name), range)
    }

    pub(super) fn parse_count(
        &mut self,
        w: &Spanned<String>,
        what: &str,
        range: &Count,
    ) -> Option<Spanned<u64>> {
        match w.node.parse::<u64>() {
            Ok(n) if range.contains(n) => Some(Spanned::new(n, w.span)),
            _ => {
                self.diags.error(
                    w.span,
                    format!("`{what}` must be {}, not `{}`", range.describe(), w.node),
                );
                None
            }
        }
    }

    /// One word of `T`'s list, written in `el` (the element `id`).
    fn words_field<T: Words>(&mut self, el: &Element, id: E) -> Option<Spanned<T>> {
        let w = self.word_field(el, id);
        self.word(&w.node, w.span, &el.name)
    }

    /// `v`, one word of `T`'s list; `what` names the place in the error.
    pub(super) fn word<T: Words>(&mut self, v: &str, span: Span, what: &str) -> Option<Spanned<T>> {
        match T::parse(v) {
            Some(t) => Some(Spanned::new(t, span)),
            None => {
                let words: Vec<&str> = T::LIST.names().collect();
                self.bad_enum(span, what, v, &words);
                None
            }
        }
    }

    /// The model identifier; an empty `<model .../>` keeps the run's default model.
    fn model(&mut self, el: &Element) -> Option<Spanned<String>> {
        schema::no_elements(el, self.diags);
        let t = el.text();
        let w = Spanned::new(t.trimmed().to_string(), t.trimmed_span());
        if w.node.is_empty() {
            return None;
        }
        match models::parse_model(&w.node) {
            Err(e) => {
                self.diags.push(
                    Diagnostic::error(w.span, format!("malformed model identifier: {e}"))
                        .with_help("write `provider:model` (openai:gpt-4o-mini) or a known model name (claude-3-5-sonnet-latest)"),
                );
                None
            }
            Ok(m) => {
                if m.provider.is_none() {
                    self.diags.push(
                        Diagnostic::warning(
                            w.span,
                            format!(
                                "unknown model `{}`: no provider can be inferred from its name",
                                m.name
                            ),
                        )
                        .with_help(format!(
                            "name the provider, e.g. `openai:{}` for an OpenAI-compatible server",
                            m.name
                        )),
                    );
                }
                Some(w)
            }
        }
    }

    /// `temperature` 0–2, `top_p` 0–1, `max_tokens` a positive integer, `seed` an
    /// integer, `stop` text or a JSON array of texts: each checked at its attribute.
    fn model_settings(&mut self, el: &Element) -> ModelSettings {
        schema::check_attrs(el, E::Model, self.diags);
        let mut m = ModelSettings {
            span: Some(el.span),
            ..ModelSettings::default()
        };
        let entry = language::element(E::Model);
        for a in &el.attrs {
            let (v, span) = (a.value.trimmed(), a.value.trimmed_span());
            // Each attribute's range is the table's; one it does not give is reported.
            let Some(spec) = entry.attr(&a.name) else {
                continue;
            };
            match (spec.name, spec.value) {
                ("temperature", ValueKind::Number(r)) => {
                    m.temperature = self.number_in(v, span, spec.name, r)
                }
                ("top_p", ValueKind::Number(r)) => m.top_p = self.number_in(v, span, spec.name, r),
                ("max_tokens", ValueKind::Count(r)) => {
                    let w = Spanned::new(v.to_string(), span);
                    m.max_tokens = self.parse_count(&w, spec.name, r)
                }
                ("seed", ValueKind::Integer) => match v.parse::<i64>() {
                    Ok(n) => m.seed = Some(Spanned::new(n, span)),
                    Err(_) => self.diags.error(
                        span,
                        format!("`seed` must be {}, not `{v}`", spec.value.describe()),
                    ),
                },
                ("stop", ValueKind::NonEmpty) => m.stop = self.stop(&a.value.value, a.value.span),
                _ => self.unread_attr(el, spec.name, span),
            }
        }
        m
    }

    /// `stop` (DESIGN §20): the text exactly as written, white space included
    /// (`stop="&#10;"` stops at a newline), or, when it starts with `[`, a JSON array of
    /// 1 to 4 sequences (`stop='["\n", "Observation:"]'`).
    fn stop(&mut self, v: &str, span: Span) -> Option<Spanned<Vec<String>>> {
        let max = tv_vm::bundle::MAX_STOP_SEQUENCES;
        if v.is_empty() {
            self.diags.error(
                span,
                "`stop` must not be empty: it is the text at which the reply ends",
            );
            return None;
        }
        let problem = if !v.starts_with('[') {
            return Some(Spanned::new(vec![v.to_string()], span));
        } else {
            match serde_json::from_str::<Vec<String>>(v) {
                Ok(all) if all.is_empty() || all.len() > max => format!(
                    "`stop` holds {} sequences: give 1 to {max} (OpenAI takes at most {max})",
                    all.len()
                ),
                Ok(all) if all.iter().any(String::is_empty) => {
                    "`stop` holds an empty sequence: each is text at which the reply ends".into()
                }
                Ok(all) => return Some(Spanned::new(all, span)),
                Err(e) => format!("`stop` starts with `[` but is not a JSON array of strings: {e}"),
            }
        };
        self.diags.push(Diagnostic::error(span, problem).with_help(
            "several sequences are a JSON array with JSON's escapes: stop='[\"\\n\", \"Observation:\"]'; a sequence that starts with `[` is written as one: stop='[\"[\"]'",
        ));
        None
    }

    fn number_in(
        &mut self,
        v: &str,
        span: Span,
        what: &str,
        range: &'static Number,
    ) -> Option<Spanned<f64>> {
        match v.parse::<f64>() {
            Ok(n) if range.contains(n) => Some(Spanned::new(n, span)),
            _ => {
                let kind = ValueKind::Number(range).describe();
                self.diags
                    .error(span, format!("`{what}` must be {kind}, not `{v}`"));
                None
            }
        }
    }

    /// An attribute the table gives an element and no reader reads: as good as unknown.
    pub(super) fn unread_attr(&mut self, el: &Element, name: &str, span: Span) {
        self.diags.error(
            span,
            format!("unknown attribute `{name}` on `<{}>`", el.name),
        );
    }

    fn provider(&mut self, el: &Element, id: E) -> Option<Spanned<String>> {
        let w = self.word_field(el, id);
        self.word::<Provider>(&w.node, w.span, &el.name)?;
        Some(w)
    }

    fn output_format(&mut self, el: &Element) -> OutputFormat {
        schema::check_attrs(el, E::OutputFormat, self.diags);
        schema::no_elements(el, self.diags);
        schema::no_text(el, self.diags);
        let kind = match el.attr("type") {
            Some(a) => {
                let (v, span) = (a.value.trimmed(), a.value.trimmed_span());
                self.word(v, span, "output format type")
                    .unwrap_or(Spanned::new(OutputKind::Text, span))
            }
            None => {
                self.diags.push(
                    Diagnostic::error(el.head(), "`<output_format>` needs a `type` attribute")
                        .with_help("write type=\"json\" or type=\"text\""),
                );
                Spanned::new(OutputKind::Text, el.head())
            }
        };
        let schema = el
            .attr("schema")
            .and_then(|a| self.type_attr(&a.value, "schema type"));
        if let (Some(s), OutputKind::Text) = (&schema, kind.node) {
            if el.attr("type").is_some_and(|a| a.value.trimmed() == "text") {
                self.diags.push(
                    Diagnostic::error(s.span, "a `schema` applies only to `type=\"json\"` output")
                        .with_help("use type=\"json\" or remove the schema"),
                );
            }
        }
        let retries = el.attr("retries").and_then(|a| self.retries(&a.value));
        if let (Some(r), OutputKind::Text) = (&retries, kind.node) {
            self.diags.push(
                Diagnostic::error(r.span, "`retries` applies only to `type=\"json\"` output")
                    .with_help("text output is never checked, so no reply is asked again; use type=\"json\" with a schema, or remove `retries`"),
            );
        }
        OutputFormat {
            kind,
            schema,
            retries,
            span: el.span,
        }
    }

    /// `retries="N"`: a whole number in the table's range (0 to 10).
    fn retries(&mut self, text: &Text) -> Option<Spanned<u32>> {
        let span = text.trimmed_span();
        let range = match language::element(E::OutputFormat).attr("retries")?.value {
            ValueKind::Count(range) => range,
            _ => return None,
        };
        match text.trimmed().parse::<u32>() {
            Ok(n) if range.contains(u64::from(n)) => Some(Spanned::new(n, span)),
            _ => {
                self.diags.push(
                    Diagnostic::error(
                        span,
                        format!("`retries` is `{}`, not {}", text.trimmed(), range.describe()),
                    )
                    .with_help("retries is how many times a reply that does not fit its type is asked again (default 1)"),
                );
                None
            }
        }
    }

    fn context_management(&mut self, el: &Element) -> ContextManagement {
        schema::check_attrs(el, E::ContextManagement, self.diags);
        schema::no_text(el, self.diags);
        let entry = language::element(E::ContextManagement);
        let mut cm = ContextManagement {
            span: el.span,
            ..ContextManagement::default()
        };
        let mut seen: Vec<&Element> = Vec::new();
        for child in el.elements() {
            if let Some(prev) = seen.iter().find(|p| p.name == child.name) {
                self.diags.push(
                    Diagnostic::error(child.head(), format!("`<{}>` is given twice", child.name))
                        .with_secondary(prev.head(), "first given here"),
                );
                continue;
            }
            seen.push(child);
            match entry.child(&child.name) {
                Some(id @ E::InheritContext) => cm.inherit_context = self.words_field(child, id),
                Some(id @ E::AccumulateData) => cm.accumulate_data = self.bool_field(child, id),
                Some(id @ E::AccumulationFormat) => {
                    cm.accumulation_format = self.words_field(child, id)
                }
                Some(id @ E::FreshContext) => cm.fresh_context = self.words_field(child, id),
                _ => schema::unknown_element(child, &el.name, entry.children(), self.diags),
            }
        }
        cm
    }

    fn file_paths(&mut self, el: &Element) -> Option<Spanned<FilePaths>> {
        schema::check_attrs(el, E::FilePaths, self.diags);
        schema::no_text(el, self.diags);
        let source = match el.attr("source") {
            Some(a) => {
                let (v, span) = (a.value.trimmed(), a.value.trimmed_span());
                Some(
                    self.word::<FilePathsSource>(v, span, "file_paths source")?
                        .node,
                )
            }
            None => None,
        };
        let entry = language::element(E::FilePaths);
        let mut paths = Vec::new();
        let mut command = None;
        let mut description = None;
        for child in el.elements() {
            let once = match entry.child(&child.name) {
                Some(id @ E::Path) => {
                    paths.push(self.text_field(child, id));
                    continue;
                }
                Some(id @ E::FilePathsCommand) => (&mut command, id),
                Some(id @ E::FilePathsDescription) => (&mut description, id),
                _ => {
                    schema::unknown_element(child, &el.name, entry.children(), self.diags);
                    continue;
                }
            };
            match once {
                (Some(_), _) => {
                    self.diags
                        .error(child.head(), format!("`<{}>` is given twice", child.name));
                }
                (slot, id) => *slot = Some(self.text_field(child, id)),
            }
        }
        let given = usize::from(!paths.is_empty())
            + usize::from(command.is_some())
            + usize::from(description.is_some());
        if given > 1 {
            self.diags.push(
                Diagnostic::error(el.head(), "`<file_paths>` takes `<path>` elements, or one `<command>`, or one `<description>`, not a mix")
                    .with_help("choose one source and say which with source=\"literal|command|description\""),
            );
            return None;
        }
        let fp = match source {
            Some(FilePathsSource::Command) => {
                FilePaths::Command(command.or_else(|| self.missing_source(el, "command"))?)
            }
            Some(FilePathsSource::Description) => FilePaths::Description(
                description.or_else(|| self.missing_source(el, "description"))?,
            ),
            Some(_) if command.is_some() || description.is_some() => {
                self.diags.push(
                    Diagnostic::error(el.head(), "`source=\"literal\"` takes `<path>` elements")
                        .with_help(
                            "set source=\"command\" or source=\"description\" to match the child",
                        ),
                );
                return None;
            }
            _ => match (command, description) {
                (Some(c), _) => FilePaths::Command(c),
                (_, Some(d)) => FilePaths::Description(d),
                _ => FilePaths::Literal(paths),
            },
        };
        Some(Spanned::new(fp, el.span))
    }

    fn missing_source(&mut self, el: &Element, child: &str) -> Option<TextTemplate> {
        self.diags.error(
            el.head(),
            format!("`source=\"{child}\"` needs a `<{child}>` child"),
        );
        None
    }
}
