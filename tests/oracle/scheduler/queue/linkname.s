// Empty: lets the shims declare the linknamed flush methods without bodies.
