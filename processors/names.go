package processors

// Names of the built-in processors, as used in pipeline specs and returned
// by their Name methods. They match the reference implementation's names.
const (
	NameAgentCouncilFlatten          = "AgentCouncilFlattenProcessor"
	NameCompressedGroupRoleTransform = "CompressedGroupRoleTransformProcessor"
	NameDisabledToolCallFilter       = "DisabledToolCallFilter"
	NameGroupMessageFlatten          = "GroupMessageFlattenProcessor"
	NameGroupOrchestrationFilter     = "GroupOrchestrationFilterProcessor"
	NameGroupRoleTransform           = "GroupRoleTransformProcessor"
	NameHistorySummary               = "HistorySummaryProvider"
	NameHistoryTruncate              = "HistoryTruncateProcessor"
	NameInputTemplate                = "InputTemplateProcessor"
	NameKnowledgeInjector            = "KnowledgeInjector"
	NameMessageCleanup               = "MessageCleanupProcessor"
	NameMessageContent               = "MessageContentProcessor"
	NameModelInfo                    = "ModelInfoProvider"
	NamePlaceholderVariables         = "PlaceholderVariablesProcessor"
	NameReactionFeedback             = "ReactionFeedbackProcessor"
	NameSupervisorRoleRestore        = "SupervisorRoleRestoreProcessor"
	NameSystemDate                   = "SystemDateProvider"
	NameSystemRoleInjector           = "SystemRoleInjector"
	NameTaskCallbackMessage          = "TaskCallbackMessageProcessor"
	NameTaskMessage                  = "TaskMessageProcessor"
	NameTasksFlatten                 = "TasksFlattenProcessor"
	NameToolCall                     = "ToolCallProcessor"
	NameToolMessageReorder           = "ToolMessageReorder"
	NameToolSystemRole               = "ToolSystemRoleProvider"
	NameUserMemoryInjector           = "UserMemoryInjector"
	NameVerifyMessage                = "VerifyMessageProcessor"

	// Processors of the newer upstream context-engine (spec messages-engine).
	NameActivationResultTrim            = "ActivationResultTrimProcessor"
	NameHistoricalWebSearchResultFilter = "HistoricalWebSearchResultFilter"
	NamePlaceholderMessageFilter        = "PlaceholderMessageFilterProcessor"
	// The placeholder filter again, after the flatten steps.
	NamePostFlattenPlaceholderMessageFilter = "PostFlattenPlaceholderMessageFilterProcessor"
	NameStaleToolResultTrim                 = "StaleToolResultTrimProcessor"
	NameLocalSystemToolSnapshotInjector     = "LocalSystemToolSnapshotInjector"
	NameContextSelectionsInjector           = "ContextSelectionsInjector"
	NameGroupContextInjector                = "GroupContextInjector"
)
