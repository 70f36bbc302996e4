import { add } from "./lib";

export const total = add(1, 2);
