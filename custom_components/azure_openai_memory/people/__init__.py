"""Who is speaking, the one access policy, incognito and the Household memory API."""
