package processors

// builtins returns the constructors of the built-in processors, wired with d.
func (d deps) builtins() map[string]Constructor {
	return map[string]Constructor{
		NameAgentCouncilFlatten:          d.agentCouncilFlatten,
		NameCompressedGroupRoleTransform: d.compressedGroupRoleTransform,
		NameDisabledToolCallFilter:       d.disabledToolCallFilter,
		NameGroupMessageFlatten:          d.groupMessageFlatten,
		NameGroupOrchestrationFilter:     d.groupOrchestrationFilter,
		NameGroupRoleTransform:           d.groupRoleTransform,
		NameHistorySummary:               d.historySummary,
		NameHistoryTruncate:              d.historyTruncate,
		NameInputTemplate:                d.inputTemplate,
		NameKnowledgeInjector:            d.knowledge,
		NameMessageCleanup:               d.messageCleanup,
		NameMessageContent:               d.messageContent,
		NameModelInfo:                    d.modelInfo,
		NamePlaceholderVariables:         d.placeholderVariables,
		NameReactionFeedback:             d.reactionFeedback,
		NameSupervisorRoleRestore:        d.supervisorRoleRestore,
		NameSystemDate:                   d.systemDate,
		NameSystemRoleInjector:           d.systemRole,
		NameTaskCallbackMessage:          d.taskCallbackMessage,
		NameTaskMessage:                  d.taskMessage,
		NameTasksFlatten:                 d.tasksFlatten,
		NameToolCall:                     d.toolCall,
		NameToolMessageReorder:           d.toolMessageReorder,
		NameToolSystemRole:               d.toolSystemRole,
		NameUserMemoryInjector:           d.userMemory,
		NameVerifyMessage:                d.verifyMessage,

		// Processors of the newer upstream context-engine.
		NameActivationResultTrim:                d.activationResultTrim,
		NameHistoricalWebSearchResultFilter:     d.historicalWebSearchResultFilter,
		NamePlaceholderMessageFilter:            d.placeholderMessageFilter,
		NamePostFlattenPlaceholderMessageFilter: d.postFlattenPlaceholderMessageFilter,
		NameStaleToolResultTrim:                 d.staleToolResultTrim,
		NameLocalSystemToolSnapshotInjector:     d.localSystemToolSnapshotInjector,
		NameContextSelectionsInjector:           d.contextSelectionsInjector,
		NameGroupContextInjector:                d.groupContextInjector,
	}
}
