// Package processors holds the built-in steps of the context pipeline
// (see package enginecore) and builds pipelines from declarative specs.
//
// Each processor prepares one aspect of a conversation for a model call,
// following the reference implementation (LobeHub's context-engine):
//
//   - message structure: GroupMessageFlatten, TasksFlatten,
//     AgentCouncilFlatten, SupervisorRoleRestore,
//     CompressedGroupRoleTransform, GroupRoleTransform,
//     GroupOrchestrationFilter, MessageCleanup, MessageContent,
//     ReactionFeedback, VerifyMessage;
//   - tool handling: ToolCall, ToolMessageReorder, DisabledToolCallFilter,
//     ToolSystemRoleProvider (with ToolNameResolver and
//     SanitizeToolArguments);
//   - async tasks: TaskMessage, TaskCallbackMessage;
//   - context management: HistoryTruncate, HistorySummaryProvider,
//     InputTemplate, PlaceholderVariables, SystemRoleInjector,
//     SystemDateProvider, ModelInfoProvider, KnowledgeInjector,
//     UserMemoryInjector.
//
// Every processor has a Go constructor taking a config struct, and a name
// (Name* constants) under which Default registers a constructor that reads
// the same config from generic JSON. Settings that are code rather than
// data in the reference (capability checks, variable generators, formatters,
// the clock) are Go functions: fields of the config structs, or, for
// processors built from a spec, Options given to Default.
//
// A Spec lists processors by name, in order, each with its config; it is
// written in YAML or JSON and built with Registry.Build:
//
//	spec := processors.DefaultSpec()
//	spec.Configure(processors.NameSystemRoleInjector, map[string]any{"systemRole": role})
//	engine, err := processors.Default(processors.WithCapabilities(caps)).Build(spec)
//	...
//	result, err := engine.Process(ctx, messages)
//
// Processors work on generic JSON messages and follow the reference's
// JavaScript semantics where the output depends on them (truthiness,
// string conversion, UTF-16 lengths). They never modify their input: a
// changed message is a copy, and an unchanged list is passed on as is.
// A processor holds no state between calls and may be used by several
// pipelines at once, provided the functions given to it are safe for
// concurrent use.
package processors
