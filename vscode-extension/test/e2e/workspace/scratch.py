# scratch space for the code the agent suggests
